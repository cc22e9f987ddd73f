def register_dynamic_opts(conf):
    """The stand-in CONF holds every section already."""
