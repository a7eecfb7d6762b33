// Command server is the conformance suite's server under test: connect-go's
// conformance service with connectbudget's server interceptor installed, or,
// with -plain, without it. It reads a ServerCompatRequest on standard input
// and writes the ServerCompatResponse with its address on standard output.
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/timebudget/budget/edge"
	"os"
	"os/signal"
	"syscall"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/connectbudget/internal/sut"
)

func main() {
	plain := flag.Bool("plain", false, "serve without connectbudget's interceptor (the baseline)")
	streams := flag.Bool("streams", false, "also give streams a 10 s per-message budget and idle timeout")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var opts []connect.HandlerOption
	if !*plain {
		var bopts []edge.ServerOption
		if *streams {
			bopts = append(bopts, connectbudget.WithMessageBudget(10*time.Second), connectbudget.WithIdleTimeout(10*time.Second))
		}
		opts = append(opts, connect.WithInterceptors(connectbudget.NewServerInterceptor(bopts...)))
	}
	if err := sut.Serve(ctx, os.Stdin, os.Stdout, opts...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
