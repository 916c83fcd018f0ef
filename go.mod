module github.com/saccbook/saccbook

go 1.26
