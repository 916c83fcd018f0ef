module github.com/saccbook/saccbook/exercises

go 1.26
