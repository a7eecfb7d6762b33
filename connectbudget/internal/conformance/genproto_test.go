package conformance

// The suite's runner depends on github.com/improbable-eng/grpc-web, which
// requires the 2021 google.golang.org/genproto, the module that still held
// googleapis/rpc before it moved to a module of its own. In the workspace
// the go command selects one version of each module across all modules, and
// that old one would shadow googleapis/rpc for every module using gRPC
// ("ambiguous import"). Importing a package of a current genproto keeps the
// requirement on a version that no longer holds googleapis/rpc.
import _ "google.golang.org/genproto/googleapis/type/date"
