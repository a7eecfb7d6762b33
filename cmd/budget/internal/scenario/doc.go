// Package scenario declares the demo's scenarios (the geo and checkout call
// paths: their dependencies, stages and fallback ladders) and the faults that
// --fault injects into them.
package scenario
