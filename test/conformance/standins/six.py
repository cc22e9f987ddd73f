string_types = (str,)
