package sut

// The generated code under gen comes from the .proto files of
// connectrpc.com/conformance v1.0.7 (directory proto), with protoc,
// protoc-gen-go v1.36.12 and protoc-gen-connect-go v1.21.1:
//
//	P=github.com/timebudget/budget/connectbudget/internal/sut/gen
//	M=Mconnectrpc/conformance/v1/service.proto=$P/conformancev1 (and the same for
//	  client_compat, server_compat and config)
//	protoc -I $(go env GOMODCACHE)/connectrpc.com/conformance@v1.0.7/proto \
//	  --go_out=gen --go_opt=module=$P,$M --connect-go_out=gen --connect-go_opt=module=$P,$M \
//	  connectrpc/conformance/v1/{service,client_compat,server_compat,config}.proto
