module github.com/timebudget/budget/amqpbudget

go 1.26.0

require (
	github.com/rabbitmq/amqp091-go v1.16.0
	github.com/timebudget/budget v0.7.1
	go.uber.org/goleak v1.3.0
)
