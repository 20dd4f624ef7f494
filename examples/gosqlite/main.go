// Command gosqlite is a Go program whose C code — SQLite, through the cgo package
// github.com/mattn/go-sqlite3 — is compiled instrumented and traced with ftkit; its Go
// code is not (see README.md). It builds a small table of orders, sums them by customer
// and prints the result, the same traced or not.
package main

import (
	"database/sql"
	"fmt"
	"os"

	ftrt "github.com/ftkit/ftkit/runtime"
	_ "github.com/mattn/go-sqlite3"
)

func run() error {
	db, err := sql.Open("sqlite3", "file::memory:?cache=shared")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, amount INTEGER)`); err != nil {
		return err
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	ins, err := tx.Prepare(`INSERT INTO orders (customer, amount) VALUES (?, ?)`)
	if err != nil {
		return err
	}
	for i := 0; i < 200; i++ {
		if _, err := ins.Exec(fmt.Sprintf("customer%d", i%7), i*3%101); err != nil {
			return err
		}
	}
	ins.Close()
	if err := tx.Commit(); err != nil {
		return err
	}
	rows, err := db.Query(`SELECT customer, COUNT(*), SUM(amount) FROM orders GROUP BY customer ORDER BY customer`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		var n, sum int
		if err := rows.Scan(&c, &n, &sum); err != nil {
			return err
		}
		fmt.Printf("%s %d %d\n", c, n, sum)
	}
	return rows.Err()
}

func main() {
	// The Go runtime leaves with exit_group, never through libc's exit(): finish the
	// trace (a no-op when the program runs untraced).
	err := run()
	ftrt.TraceFinish()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gosqlite:", err)
		os.Exit(1)
	}
}
