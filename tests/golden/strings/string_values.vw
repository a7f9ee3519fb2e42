1 |a:2 x:red y:3
1 |a x:red|b y:1
1 |a x:1|b y:1
-1 |a:0.5 x:blue z:2 |b w:green
1 |a x:red|b|c y
1 |a:3 x:red|b:2 y:1 z
-1 |b:0.25 q:green r s:2
1 'tag |a x:yes
