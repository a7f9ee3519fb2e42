"""Crowdsourcing: true labels from noisy ratings (SPEC §E).

``model`` holds settings and state, ``kernels`` the numba inner loops, ``batch`` batch MAP-EM,
``online`` online EM with the lazy hyperprior, ``baselines`` majority vote and one-coin
Dawid-Skene, ``report`` what the command line prints and writes.
"""
