package localrunner

// IsPrism is the one answer to "is this prism?": whether --runner names
// Beam's local runner, prism, whose traps this package works around. It is
// prism whether it runs in this process (no --endpoint: EnsureJobService
// starts it) or as a job server elsewhere (--runner=prism
// --endpoint=HOST:PORT submits to that prism job server, as the SDK's prism
// runner does), with the workers in this process (LOOPBACK) or not
// (PROCESS, DOCKER). The empty runner is the commands' default, prism.
//
// Every prism-only behaviour is switched on by this answer and nothing
// else: --runner=universal is an unknown portable job server (Flink's,
// say), never assumed to be prism.
func IsPrism(runner string) bool {
	switch runner {
	case "", "prism", "PrismRunner":
		return true
	}
	return false
}
