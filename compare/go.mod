module github.com/timebudget/budget/compare

go 1.26.0

require (
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/timebudget/budget v0.2.0
	go.uber.org/goleak v1.3.0
)

require github.com/bits-and-blooms/bitset v1.24.4 // indirect

require (
	github.com/go-kratos/aegis v0.2.0
	github.com/zeromicro/go-zero v1.10.3
	gonum.org/v1/plot v0.17.0
)
