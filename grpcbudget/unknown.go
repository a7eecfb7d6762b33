package grpcbudget

// UnknownMethodStage is the stage of a call to a method the server did not
// register, which a server's grpc.UnknownServiceHandler answers (a proxy, a
// generic gateway). Such a method's name is whatever the client sent, so it
// is never used as a stage: a client could otherwise mint any number of
// stage names, and with them metric series, or push the names of the
// server's own methods and Ops out of a bounded set of them (otelbudget
// keeps a bounded number). Registered methods keep their full method name
// as their stage unless [edge.WithStage] names one. A call is taken as
// unregistered when grpc-go hands the interceptor no service
// implementation, as it does for UnknownServiceHandler.
const UnknownMethodStage = "unknown"
