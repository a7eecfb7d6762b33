package overload_test

import (
	"testing"

	"github.com/timebudget/budget/compare/internal/overload"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The harness starts this test binary again as its backend.
	overload.ServeBackendIfChild()
	goleak.VerifyTestMain(m,
		// Started when their packages load, and never stopped: go-zero's CPU
		// sampler and signal handler, and Kratos aegis' CPU samplers.
		goleak.IgnoreAnyFunction("github.com/zeromicro/go-zero/core/stat.init.1.func1"),
		goleak.IgnoreAnyFunction("github.com/zeromicro/go-zero/core/proc.init.1.func1"),
		goleak.IgnoreAnyFunction("github.com/go-kratos/aegis/internal/cpu.init.0.func1"),
		goleak.IgnoreAnyFunction("github.com/go-kratos/aegis/ratelimit/bbr.cpuproc"),
	)
}
