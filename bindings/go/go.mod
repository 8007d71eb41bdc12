module gpubuf.org/gpubuf

go 1.19
