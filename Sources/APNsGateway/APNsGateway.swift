// APNsGateway module: see README.md
