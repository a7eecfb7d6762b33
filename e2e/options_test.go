package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/edge"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
)

// The options every adapter shares are one set, from package edge: each
// adapter's constructors take the same values.
func TestSharedOptionsServeEveryAdapter(t *testing.T) {
	server := []edge.ServerOption{
		edge.WithPolicy(&wire.Policy{Trust: wire.SourcesNone}), edge.WithStage("checkout"),
		edge.WithLedgerCapacity(8), edge.WithAnswerMargin(-1), edge.WithAdmission(edge.Ops{}.Op),
	}
	client := []edge.ClientOption{edge.WithTransit(0), edge.WithMinUseful(0), edge.WithClientStage("pricing"), edge.WithAdmission(nil)}
	_ = httpbudget.NewHandler(http.NotFoundHandler(), server...)
	_ = httpbudget.NewTransport(nil, client...)
	_ = grpcbudget.UnaryServerInterceptor(server...)
	_ = grpcbudget.StreamServerInterceptor(server...)
	_ = grpcbudget.UnaryClientInterceptor(client...)
	_ = grpcbudget.StreamClientInterceptor(client...)
	_ = connectbudget.NewServerInterceptor(server...)
	_ = connectbudget.NewClientInterceptor(client...)
}

// An adapter's own option given to another adapter's constructor is a setup
// mistake that names both packages, not an option silently ignored.
func TestAnAdaptersOwnOptionElsewherePanics(t *testing.T) {
	classify := grpcbudget.WithClassifier(func(context.Context, string) budget.Criticality { return budget.Critical })
	for name, construct := range map[string]func(){
		"connectbudget": func() { connectbudget.NewServerInterceptor(classify) },
		"httpbudget":    func() { httpbudget.NewHandler(http.NotFoundHandler(), classify) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, budget.ErrMisconfigured) || !strings.Contains(err.Error(), "budget/grpcbudget") ||
					!strings.Contains(err.Error(), "budget/"+name) {
					t.Fatalf("grpcbudget.WithClassifier given to %s: panic %v, want ErrMisconfigured naming both packages", name, err)
				}
			}()
			construct()
		})
	}
}
