"""fabricsim.engine"""
