"""bench"""
def add_parser(sub):
    pass
