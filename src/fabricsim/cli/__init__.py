"""fabricsim.cli"""
