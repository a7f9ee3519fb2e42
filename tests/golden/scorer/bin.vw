1 |a x
-1 |a y
1 |a x
