CODECS: list = []
