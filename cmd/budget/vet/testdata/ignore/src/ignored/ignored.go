package ignored

import (
	"context"
	"time"
)

func audit(ctx context.Context, write func(context.Context) error) error {
	//budget:ignore bgdeadline the entry is written even after the request ends
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return write(c)
}

func fetch(ctx context.Context, write func(context.Context) error) error {
	c, cancel := context.WithTimeout(context.Background(), time.Second) // want `context.WithTimeout derived from context.Background\(\) although ctx is in scope`
	defer cancel()
	return write(c)
}

func other(ctx context.Context, write func(context.Context) error) error {
	//budget:ignore httpserver names another check, so this finding stands
	c, cancel := context.WithTimeout(context.Background(), time.Second) // want `context.WithTimeout derived from context.Background\(\)`
	defer cancel()
	return write(c)
}
