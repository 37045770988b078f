"""docs"""
def add_parser(sub):
    pass
