# cmake -DIN=file -DOUT=file.c -DSYM=name -P embed.cmake: a file as a C byte array.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "#include <stddef.h>\nconst char ${SYM}[] = {${bytes} 0};\nconst size_t ${SYM}_len = ${len};\n")
