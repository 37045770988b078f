"""The judge's selftests. They read the judge's English words, so they run in an English locale
whatever the shell's; test_languages sets its own."""
import os

os.environ["LC_ALL"] = "C.UTF-8"
