"""doctor"""
def add_parser(sub):
    pass
