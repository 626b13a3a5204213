module github.com/aiodhq/aiod

go 1.26
