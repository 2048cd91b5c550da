// Sender module: see README.md
