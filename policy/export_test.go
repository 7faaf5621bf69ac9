package policy

// Names the external tests compare against that the package does not export.
var (
	ClientFiltered  = clientFiltered
	DeliverEnv      = deliverEnv
	DefaultSSHHosts = defaultSSHHosts
)
