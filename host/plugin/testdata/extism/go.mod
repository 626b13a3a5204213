module aiodtest/extism

go 1.24

require github.com/extism/go-pdk v1.1.3
