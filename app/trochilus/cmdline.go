package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// A commandLine describes a subcommand's command line: the help -h prints and the arguments
// that may follow the flags. Made here, every subcommand's help has one layout and a stray
// argument one message.
type commandLine struct {
	name     string // the subcommand, as typed after "trochilus"
	synopsis string // the usage line, after "usage: "
	about    string // what the command does, printed between the synopsis and the flags
	// args checks the arguments after the flags, returning a usage error; nil allows none.
	args func(args []string) error
}

// flags returns the subcommand's flag set, with its help.
func (cl commandLine) flags(stderr io.Writer) *flag.FlagSet {
	fs := newFlags(cl.name, stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: "+cl.synopsis+"\n\n"+cl.about)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args into fs and checks the arguments left after the flags.
func (cl commandLine) parse(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if cl.args != nil {
		return cl.args(fs.Args())
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
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

// newFlags returns a flag set for a subcommand that reports errors instead of exiting. A
// commandLine gives it its help; tokenize and template, which have none of their own, keep
// the flag package's.
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

// flagSet reports whether the flag called name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
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
