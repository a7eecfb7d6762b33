module github.com/timebudget/budget/connectbudget

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	github.com/timebudget/budget v0.7.1
	go.uber.org/goleak v1.3.0
)

require google.golang.org/protobuf v1.36.11
