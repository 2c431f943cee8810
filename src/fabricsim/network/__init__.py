"""fabricsim.network"""
