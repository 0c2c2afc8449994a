# Turns the file IN into a C source OUT defining `const char SYMBOL[]`: the
# file's bytes and a terminating NUL (run with cmake -P at build time).
file(READ ${IN} hex HEX)
string(REGEX REPLACE "(..)" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* Generated from ${IN} by cmake/embed.cmake: do not edit. */\nconst char ${SYMBOL}[] = {\n${bytes}0x00};\n")
