// Command budget-vet runs budget vet's checks under go vet:
//
//	go install github.com/timebudget/budget/cmd/budget/cmd/budget-vet
//	go vet -vettool=$(which budget-vet) ./...
//
// go vet hands it one package at a time (the unitchecker protocol), so it
// shares go vet's build cache and flags: -bgdeadline=false turns a check
// off, -json prints JSON. It exits as go vet does.
package main

import (
	"github.com/timebudget/budget/cmd/budget/vet"
	"golang.org/x/tools/go/analysis/unitchecker"
)

func main() { unitchecker.Main(vet.WithIgnores(vet.Analyzers)...) }
