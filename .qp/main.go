package main

import (
	"context"
	"os"

	"github.com/intakehq/intake/store/sqlite"
)

func main() {
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: os.Args[1]})
	if err != nil {
		panic(err)
	}
	s.Close()
}
