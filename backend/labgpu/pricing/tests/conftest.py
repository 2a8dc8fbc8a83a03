from emulator.pytest_fixtures import emulator, emulator_server  # noqa: F401
