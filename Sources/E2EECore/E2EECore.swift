// E2EECore
