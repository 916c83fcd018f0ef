// Package qtest speaks QEMU's qtest protocol to a machine: a line-based text protocol
// in which a test program stands in for the CPU, reads and writes guest memory and I/O
// ports, and steps the virtual clock. It lets a learner poke the device by hand exactly
// as QEMU developers do, and lets any qtest-style client drive the machine. The
// contract is shared/spec/QTEST.md; this comment records how saccbook fills in what
// that contract leaves open.
//
// # Requests and replies
//
// Every request is one line and gets exactly one reply line, which starts with "OK" or
// "FAIL ". Where QEMU would abort the whole emulator on a malformed request, saccbook
// answers "FAIL <reason>" and keeps serving, because a learner typing by hand makes
// mistakes and must not lose the machine's state to a typo.
//
//	outb|outw|outl ADDR VALUE        OK
//	inb|inw|inl ADDR                 OK 0x%04x
//	writeb|writew|writel|writeq ADDR VALUE   OK
//	readb|readw|readl|readq ADDR     OK 0x%016x
//	read ADDR SIZE                   OK 0x<2·SIZE hex digits, lowercase>
//	write ADDR SIZE 0xDATA           OK
//	b64read ADDR SIZE                OK <standard base64, padded>
//	b64write ADDR SIZE B64           OK
//	memset ADDR SIZE VALUE           OK
//	clock_step [NS]                  OK <virtual time in decimal ns>
//	clock_set NS                     OK <virtual time in decimal ns>
//	endianness                       OK little      (extension, as in QEMU's qtest)
//	trace on|off                     OK             (extension: echo trace events to the log)
//	help [REQUEST]                   OK <text>      (extension: the requests, or what one does)
//
// help answers on one line, as every request does: without an argument, every request
// with its arguments, separated by "; "; with one, what that request does and replies.
// Like trace, it is an extension that changes no other reply (QTEST.md); in particular
// there are no comments: "readl 0 # MAGIC" is a request with two arguments too many.
//
// Tokens are separated by runs of spaces and tabs; one trailing '\r' is ignored so that
// a client with CRLF line ends (telnet, a Windows netcat) works. Command names are
// case-sensitive, as in QEMU. Numbers follow C strtoul(s, NULL, 0) strictly (see
// ParseNumber). A VALUE wider than its access is truncated to the access width, as
// QEMU's C casts do; a port above 0xFFFF is refused, because truncating an address
// would silently touch a different port.
//
// # Limits
//
// A single read, b64read, write, b64write or memset moves at most MaxTransfer bytes
// (256 MiB) and is carried out in chunks of at most 64 KiB, so that a typo such as
// "memset 0 0x1000000000 0" is refused instead of hanging the server or exhausting
// memory; larger ranges are simply split by the client. An access whose bytes would run
// past the top of the 64-bit address space is refused rather than wrapped to address 0.
// A request line longer than MaxLine (64 MiB) is answered "FAIL line too long".
//
// On TCP the limits are lower, TCPMaxTransfer (1 MiB) and TCPMaxLine (2 MiB and a
// little), so that one connection cannot pin more than a few MiB besides its machine:
// any web page can make a browser connect to a loopback port. A Unix socket keeps the
// full limits, since only this host's users can reach it.
//
// # Serving
//
// Serve speaks the protocol on a reader and writer (stdin and stdout in the CLI);
// Listen and a Server (or ServeListener) put it on a Unix socket or a TCP port, where
// every connection gets a machine of its own. A Server serves at most MaxConns
// connections at once (DefaultMaxConns, 8) and answers one more with a single
// "FAIL too many connections" line before closing it. A connection whose first line
// is an HTTP request line ("POST / HTTP/1.1"), or too long to tell, is closed before
// anything on it runs, and the server's log says so: a web page can send a
// text/plain POST to a local port without any preflight, and the lines of its body
// would otherwise be run as requests. A connection whose client leaves a reply
// unread for a minute (it sends requests but reads nothing) is closed as well, so
// that it does not hold its place for ever.
package qtest
