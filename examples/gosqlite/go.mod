module github.com/ftkit/ftkit/examples/gosqlite

go 1.26.0

require github.com/mattn/go-sqlite3 v1.14.53

require github.com/ftkit/ftkit v0.0.0

replace github.com/ftkit/ftkit => ../..
