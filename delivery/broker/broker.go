// Package broker holds the destinations other than HTTP a consumer's url
// may name (DESIGN §12): NATS JetStream, Kafka, AMQP (RabbitMQ) and Redis
// streams, each over its own client library. It is apart from package
// delivery so that only what publishes (serve's router and the control
// plane's consumer tests, wired in cmd/intake) links those clients, never
// the control plane's transports.
package broker

import "github.com/intakehq/intake/delivery"

// All returns every broker kind intake publishes to, by scheme: for
// delivery.Options.Brokers and control.Config.Brokers.
func All() delivery.Brokers {
	return delivery.Brokers{
		"nats":   natsKind,
		"kafka":  kafkaKind,
		"amqp":   amqpKind,
		"amqps":  amqpKind,
		"redis":  redisKind,
		"rediss": redisKind,
	}
}
