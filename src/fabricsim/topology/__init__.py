"""fabricsim.topology"""
