"""fabricsim.sweep"""
