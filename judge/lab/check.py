"""check"""
def add_parser(sub):
    pass
