package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// A commandLine is a subcommand's command line as its function gets it: the flag set, made with
// the help the command table gives, and the arguments to parse into it. Made here, every
// subcommand's help has one layout and a stray argument one message.
type commandLine struct {
	*flag.FlagSet
	args []string
	// check checks the arguments left after the flags, returning a usage error; nil allows none.
	check func(args []string) error
}

// newCommandLine returns the command line of the subcommand called name with the arguments
// after its name, its flags' errors and help written to stderr.
func newCommandLine(name string, args []string, stderr io.Writer) *commandLine {
	cmd := commands()[name]
	fs := newFlags(name, stderr)
	if cmd.synopsis != "" {
		fs.Usage = func() {
			fmt.Fprintln(stderr, "usage: "+cmd.synopsis+"\n\n"+cmd.about)
			fs.PrintDefaults()
		}
	}
	return &commandLine{FlagSet: fs, args: args, check: cmd.args}
}

// parse parses the arguments into the flags and checks the arguments left after them.
func (cl *commandLine) parse() error {
	if err := parseFlags(cl.FlagSet, cl.args); err != nil {
		return err
	}
	if cl.check != nil {
		return cl.check(cl.Args())
	}
	if cl.NArg() != 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, cl.Arg(0))
	}
	return nil
}

// oneArg allows exactly one argument after the flags; what names it as the synopsis does.
func oneArg(what string) func([]string) error {
	return func(args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("%w: want one %s, got %d arguments", errUsage, what, len(args))
		}
		return nil
	}
}

// someArgs allows one argument or more after the flags; none is the usage error missing says.
func someArgs(missing string) func([]string) error {
	return func(args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("%w: %s", errUsage, missing)
		}
		return nil
	}
}

// anyArgs allows any arguments after the flags.
func anyArgs([]string) error { return nil }

// newFlags returns a flag set for a subcommand that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("trochilus "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args, turning a flag error into a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// given reports whether the flag called name was given on the command line.
func (cl *commandLine) given(name string) bool {
	set := false
	cl.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// textOrFile returns text, or the contents of file when one is named: the -p TEXT and -f FILE
// of the commands that take a text.
func textOrFile(text, file string) (string, error) {
	if file == "" {
		return text, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
