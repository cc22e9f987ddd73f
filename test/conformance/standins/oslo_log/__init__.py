# Stand-in for oslo.log: the drivers only ask for a logger.
