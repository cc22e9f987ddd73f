# Stand-in for cyborg.common.i18n: messages as they are.
def _(message):
    return message
