"""The AllocLab judge: builds an exercise's staged tests, runs them under sanitizers, and explains
what failed. `judge.py` is the command line; each module here does one job."""
