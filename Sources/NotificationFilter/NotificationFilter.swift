// NotificationFilter module: see README.md
