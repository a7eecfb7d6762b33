// Command client is the conformance suite's client under test: a connect-go
// client with connectbudget's client interceptor installed, or, with
// -plain, without it. It reads ClientCompatRequests on standard input and
// writes a ClientCompatResponse for each on standard output.
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/timebudget/budget/edge"
	"os"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/connectbudget/internal/sut"
)

func main() {
	plain := flag.Bool("plain", false, "call without connectbudget's interceptor (the baseline)")
	streams := flag.Bool("streams", false, "also give streams a 10 s per-message budget and idle timeout")
	flag.Parse()
	var opts []connect.ClientOption
	if !*plain {
		var bopts []edge.ClientOption
		if *streams {
			bopts = append(bopts, connectbudget.WithMessageBudget(10*time.Second), connectbudget.WithIdleTimeout(10*time.Second))
		}
		opts = append(opts, connect.WithInterceptors(connectbudget.NewClientInterceptor(bopts...)))
	}
	if err := sut.RunClient(context.Background(), os.Stdin, os.Stdout, opts...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
