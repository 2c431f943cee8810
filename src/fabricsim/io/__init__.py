"""fabricsim.io"""
