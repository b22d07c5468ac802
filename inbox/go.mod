module github.com/intakehq/intake/inbox

go 1.26.8
