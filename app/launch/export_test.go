package launch

// Parse is Command.Parse.
func Parse(args []string) (Options, error) { return Command.Parse(args) }

// Validate is check's validation of the settings alone, as Run reports it: a *ConfigError naming
// its flag.
func (o Options) Validate() error {
	if err := o.validate(); err != nil {
		return &ConfigError{Err: err}
	}
	return nil
}
