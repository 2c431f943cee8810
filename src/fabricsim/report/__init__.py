"""fabricsim.report"""
