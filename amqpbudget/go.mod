module github.com/timebudget/budget/amqpbudget

go 1.26.0

replace github.com/timebudget/budget => ../

require (
	github.com/rabbitmq/amqp091-go v1.16.0
	github.com/timebudget/budget v0.0.0
	go.uber.org/goleak v1.3.0
)
